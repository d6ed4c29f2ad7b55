"""netrig's side of Mininet compatibility: running scripts, `netrig mn`, the prompt."""
