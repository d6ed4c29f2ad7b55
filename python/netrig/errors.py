"""netrig's exceptions: each says what went wrong in words a user can act on."""


class NetrigError(Exception):
    """Base of every error netrig raises on purpose."""
