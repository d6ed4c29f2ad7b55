"""netrig's Mininet: the package that answers `import mininet` inside `netrig mininet`,
`netrig mn` and `netrig cli` (Mininet 2.3's API, each part mapped onto a netrig lab)."""

VERSION = "2.3.0"
