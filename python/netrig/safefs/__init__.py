"""Every file netrig writes, written without following symbolic links.

netrig runs as root and writes into directories a user may own (`./results`), so a
planted link must never send a write elsewhere. This module owns how files and
directories are created; the modules that decide what to write (exp/analysis/results.py,
exp/execute/runner.py, exp/render/report.py, exp/render/figures.py, lab/state.py) call it with a base
directory they trust and a path below it:

- the base is the directory the user named (checked with `check_owner`) or one netrig
  owns (the labs directory); everything below it is entered one component at a time,
  each opened O_NOFOLLOW|O_DIRECTORY relative to its parent's descriptor: a component
  that is a symbolic link is refused (`UnsafePath`), never followed;
- a file is written to an unpredictable temporary name created O_CREAT|O_EXCL|O_NOFOLLOW,
  fsynced, then renamed onto its name: a link planted at either name is never written
  through (a link at the final name is replaced);
- modes are explicit: `RESULTS` (0644 files, 0755 directories: results are for people)
  or `PRIVATE` (0600 and 0700, enforced on existing directories below the base too:
  lab state holds PIDs and paths); the umask may narrow them further.

Reading, its next block, is the same door the other way (`read_bytes`, `read_text`,
`list_dir`): nothing outside the base, no link followed, regular files only, each kind
of file within its `Bound`. Its last block is for files other processes write (a
directory held open and named to them by descriptor, a private staging directory whose
files are renamed in) and for trees shared with a daemon's user (FRR's, nginx's
worker's). It does not own which files exist.

The three blocks are modules of this package, and every name is importable from
`netrig.safefs` (callers use it so): `writes` (creating files and directories, the
owner check, `Modes`), `reads` (`read_bytes`, `read_text`, `list_dir`, `Bound`),
`handoff` (`Held`, `Staging`, `Shared`: directories and files handed to other
processes and daemons' users).
"""

from netrig.safefs.handoff import (
    Held,
    Shared,
    Staging,
    read_tail,
    shared_dir,
    unreachable_by,
    write_shared,
)
from netrig.safefs.reads import (
    IMAGE,
    LOG,
    META_JSON,
    RUN_JSON,
    SCENARIO_YAML,
    SERIES,
    Bound,
    MiB,
    TooLarge,
    UnsafeRead,
    list_dir,
    read_bytes,
    read_text,
)
from netrig.safefs.writes import (
    PRIVATE,
    RESULTS,
    ForeignDir,
    Modes,
    UnsafePath,
    check_owner,
    directory,
    makedirs,
    open_new,
    remove_matching,
    remove_tree,
    trusted_uids,
    unlink,
    write,
)

__all__ = ["IMAGE", "LOG", "META_JSON", "PRIVATE", "RESULTS", "RUN_JSON", "SCENARIO_YAML", "SERIES",
           "Bound", "ForeignDir", "Held", "MiB", "Modes", "Shared", "Staging", "TooLarge", "UnsafePath",
           "UnsafeRead", "check_owner", "directory", "list_dir", "makedirs", "open_new", "read_bytes",
           "read_tail", "read_text", "remove_matching", "remove_tree", "shared_dir", "trusted_uids",
           "unlink", "unreachable_by", "write", "write_shared"]
