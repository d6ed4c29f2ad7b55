"""An experiment from its scenario to its report: what `netrig run` and `netrig report`
do, in that order, so the results directory is whole before a word of it is printed.

- `load(...)`: the scenario to run: a file (with --quick and --set), or the one saved
  in a results directory being resumed.
- `open_campaign(...)`: the cluster the runs go to (reached and checked before anything
  is written); a scenario on real hosts is refused there (its runs would share the
  hosts and measure each other).
- `results_dir(...)`: where a new run's results go.
- `run(...)`: runs what is not done yet (netrig.exp.execute.campaign), then `finish`.
- `finish(out)` (and `rebuild(out)`, for `netrig report`): rewrites results.csv, the figures, report.md and report.html
  (netrig.exp.render.report), then works out the headline table's text. A report that cannot
  be made is said (`Finished.report_error`) and fails the command; the measurements
  stay on disk whatever happens to it.

Owns the order of these steps and what each outcome means for the exit status; the
words on the terminal are netrig.cli's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from netrig.errors import NetrigError

if TYPE_CHECKING:
    from netrig.exp.execute.cluster import Campaign
    from netrig.exp.spec.model import Scenario

Warn = Callable[[str], None]

# A run's status (netrig.exp.execute.campaign) as the command's exit status: stopped by
# Ctrl-C (SIGINT) 130, by SIGTERM 143, as a program those signals end.
EXIT = {"complete": 0, "failed": 1, "interrupted": 130, "terminated": 143}


class ReportError(NetrigError):
    """The report of a results directory could not be made (its results are kept)."""


def load(scenario: str | None, quick: bool = False, sets: list[str] | None = None,
         resume: Path | None = None) -> Scenario:
    """The scenario of `netrig run SCENARIO [--quick] [--set K=V]...` (a file, or an
    installed example's name: netrig.exp.spec.examples), or with `resume`
    the one saved in that results directory (meta.json and scenario.yaml through safefs)."""
    from netrig.exp.record import files as rec
    from netrig.exp.spec import examples
    from netrig.exp.spec.scenario import load_scenario

    if resume is not None:
        return rec.load_scenario_of(resume)
    if not scenario:
        raise NetrigError("netrig run SCENARIO (or --resume DIR)")
    return load_scenario(examples.find(scenario), quick=quick, sets=sets or [])


def open_campaign(address: str, cert: str | None, scenario: Scenario) -> Campaign:
    """The cluster at `address`, reached and checked, to hand `scenario`'s runs to."""
    from netrig.exp.execute import cluster

    if scenario.points and scenario.points[0].hosts:
        raise NetrigError(f"--cluster {address}: {scenario.name} runs on real hosts (hosts:), which "
                          "its runs would share: several at once would measure each other. Run it "
                          "from one machine (--local)")
    return cluster.Campaign(address, cert=cert)


def results_dir(out: Path | None, root: Path, name: str, allow_foreign: bool = False) -> Path:
    """`out` when given (it must not hold results already), else a new ROOT/NAME/TIME."""
    from netrig.exp.record import files as rec

    if out is not None:
        if (out / "meta.json").exists():
            raise NetrigError(f"--out {out}: it already holds results (use --resume {out} "
                              "to finish them)")
        return out
    return rec.new_dir(root, name, allow_foreign)


@dataclass
class Finished:
    """A results directory made whole: its report, or why there is none, and its
    headline table, or why there is none."""

    out: Path
    status: str  # the run's: complete, failed, interrupted or terminated ("complete" for a report alone)
    report: Path | None  # report.html
    report_error: str | None
    headline: str | None
    headline_error: str | None

    @property
    def code(self) -> int:
        """The exit status: the run's, and 1 for a complete run without its report."""
        return EXIT[self.status] or (1 if self.report_error else 0)


def run(scenario: Scenario, out: Path, *, resume: bool = False, progress: bool = True,
        argv: list[str] | None = None, allow_foreign: bool = False,
        campaign: Campaign | None = None, warn: Warn | None = None, width: int = 80) -> Finished:
    """Runs what `out` lacks of `scenario` (here, or on `campaign`'s workers), then makes
    its report and headline (`finish`). `warn`: each file the report's reader refused."""
    from netrig.exp.execute import campaign as runs

    try:
        out, status = runs.run(scenario, out, resume=resume, progress=progress, argv=argv,
                               allow_foreign=allow_foreign, executor=campaign)
    finally:
        if (out / "meta.json").is_file():  # what was measured, as a table, whatever happened
            from netrig.exp.render import table_csv  # (the report writes it again, beside itself)

            table_csv.write_csv(out)
    return finish(out, status, allow_foreign, warn, width)


def finish(out: Path, status: str = "complete", allow_foreign: bool = False,
           warn: Warn | None = None, width: int = 80) -> Finished:
    """results.csv, figures, report.md and report.html of `out`, then the headline's
    text; a report that cannot be made is recorded, not raised (the results stay)."""
    page: Path | None = None
    error: str | None = None
    try:
        page = report(out, allow_foreign, warn)
    except NetrigError as e:  # said in netrig's words (a ReportError, a refused directory)
        error = f"no report: {e}" if not isinstance(e, ReportError) else str(e)
    except Exception as e:  # the measurements are kept whatever the report does
        error = f"the report failed ({type(e).__name__}: {e}); the results are in {out}"
    return _with_headline(Finished(out, status, page, error, None, None), width)


def rebuild(out: Path, allow_foreign: bool = False, warn: Warn | None = None,
            width: int = 80) -> Finished:
    """`netrig report DIR`: `out`'s report made again, then its headline's text. A
    directory that is not results is refused before anything is written, and a report
    that cannot be made is raised: it is the whole command."""
    from netrig.exp.analysis import results as res

    res.load(out)
    return _with_headline(Finished(out, "complete", report(out, allow_foreign, warn), None,
                                   None, None), width)


def _with_headline(done: Finished, width: int) -> Finished:
    """`done` with its headline table's text, or the reason there is none (the rest
    goes on: the report and the files are what matter)."""
    try:
        done.headline = headline(done.out, width)
    except (NetrigError, OSError, ValueError, KeyError, TypeError) as e:
        done.headline_error = str(e)
    return done


def report(out: Path, allow_foreign: bool = False, warn: Warn | None = None) -> Path:
    """Rewrites `out`'s results.csv, figures, report.md and report.html; returns
    report.html. A module the report needs that is not installed is a ReportError
    naming it."""
    try:
        from netrig.exp.render import report as page

        return page.build(out, allow_foreign, warn=warn)
    except ImportError as e:
        raise ReportError(f"the report of {out} cannot be made: it needs the Python module "
                          f"'{e.name or e}', which is not installed here (pip install netrig installs "
                          f"it); the results are in {out}, and 'netrig report {out}' makes the "
                          "report once it is there") from None


def headline(out: Path, width: int = 80) -> str:
    """The headline table of results directory `out`, at most `width` columns."""
    from netrig.exp.analysis import results as res
    from netrig.exp.render import headline as table

    return table.summary(res.load(out), width)
