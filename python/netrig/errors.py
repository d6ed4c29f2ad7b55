"""netrig's exceptions: each says what went wrong in words a user can act on; and
`os_words`, the system's refusals (OSError) said the same way everywhere."""


class NetrigError(Exception):
    """Base of every error netrig raises on purpose."""


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be (so the same teardown
    runs); the command then exits 143 (128 + SIGTERM) where Ctrl-C's exits 130."""


def os_words(e: OSError) -> str:
    """What the system refused, in netrig's words rather than errno's (`[Errno 2] No such
    file or directory: 'x'` is `x does not exist`); names the file when the error does."""
    name = f"{e.filename} " if e.filename else ""
    if isinstance(e, FileNotFoundError):
        return f"{name}does not exist"
    if isinstance(e, PermissionError):
        return f"{name}cannot be opened: permission denied"
    if isinstance(e, IsADirectoryError):
        return f"{name}is a directory, not a file"
    if isinstance(e, NotADirectoryError):
        return f"{name}is not a directory (part of the path is a file)"
    said = e.strerror or str(e) or type(e).__name__
    said = said[:1].lower() + said[1:]
    return f"{e.filename}: {said}" if e.filename else said


def plain(message: str) -> str:
    """A message with any errno wording a wrapped OSError left in it said as os_words
    does (`[Errno 2] No such file or directory: 'x'` is `x does not exist`)."""
    import re

    def words(m: re.Match[str]) -> str:
        what, name = m.group(2), m.group(3)
        if what == "No such file or directory":
            return f"{name} does not exist" if name else "it does not exist"
        said = what[:1].lower() + what[1:]
        return f"{name}: {said}" if name else said

    return re.sub(r"\[Errno (\d+)\] ([^:'\n]+)(?:: '([^'\n]*)')?", words, message)
