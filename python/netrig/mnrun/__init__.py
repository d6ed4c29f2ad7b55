"""netrig's side of Mininet compatibility: running scripts, `netrig mn`, the prompt.

`run` runs a Mininet script on the compat package (python/netrig/mnshim); `netrig mn` is
`mn` (the run), `options` (mn's command line) and `tables` (the names its options take,
`--custom` files, the checks before a build).
"""
