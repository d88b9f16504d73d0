"""Render an incident's review report: papermill runs the template notebook, nbconvert makes HTML.

``render_report("incidents/x/incident.yaml", "reports/")`` writes ``reports/x.ipynb`` (the
executed notebook, with its outputs), ``reports/x.html`` (one self-contained file: no code,
no parameters cell, no ``<script src=…>``, no CDN; the timeline's Vega JavaScript is inlined,
so the report opens offline) and ``reports/x.sha256``, every input's SHA-256 in ``sha256sum``'s
format (``cd incidents/x && sha256sum -c …/reports/x.sha256`` checks them; the HTML's Inputs
section names it).

The kernel is always this interpreter, whether or not its venv is activated: the kernel
manager replaces the ``python3`` kernelspec's command with ``sys.executable -m
ipykernel_launcher`` (a spec found first on the Jupyter path may name another Python by absolute
path), and ``dirname(sys.executable)`` is prepended to ``PATH`` for the run (so anything the
kernel starts by name finds this environment's tools).  The template's first hidden cell
records which interpreter ran, in the ``.ipynb``.  ``PATH`` is process-global: do not render two
reports from two threads of one process at once.  Every cell has an execution timeout; a kernel that hangs or dies is retried
``retries`` times, then :class:`~replaybook.errors.ReportError` says what happened.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, NamedTuple

import nbformat

from .._guard import DISK_ERRNOS
from ..errors import InputError, ReplaybookError, ReportError
from .checksums import CHECKSUMS_MIME, SUFFIX, write_sha256sum

__all__ = ["ReportPaths", "ReportFiles", "report_files", "render_report", "to_html", "TEMPLATE_DIR", "TEMPLATE_NAME", "REVIEW_NOTEBOOK",
           "REMOVE_TAGS"]

log = logging.getLogger(__name__)

#: Folder holding replaybook's nbconvert templates.
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
#: The offline HTML template (``templates/offline``).
TEMPLATE_NAME = "offline"
#: The papermill template notebook.
REVIEW_NOTEBOOK = Path(__file__).resolve().parent / "review.ipynb"
#: Cells with these tags are left out of the HTML (also configured in ``offline/conf.json``).
REMOVE_TAGS = ("injected-parameters", "parameters", "remove")

KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


@dataclass(frozen=True)
class ReportPaths:
    """Where :func:`render_report` wrote the report.

    Attributes:
        ipynb: the executed notebook.
        html: the self-contained HTML report.
        seconds: wall time of the whole render (execution + conversion), seconds.
        attempts: executions needed (2 when the first kernel hung or died).
    """

    ipynb: Path
    html: Path
    seconds: float = 0.0
    attempts: int = 1
    #: the report's findings as counts (``report.sections.findings``), or ``None`` when the
    #: template did not display them
    findings: dict | None = None
    #: the inputs' checksum file beside the HTML (``<slug>.sha256``, see
    #: :mod:`replaybook.report.checksums`), or ``None`` when the template did not hand its
    #: inputs over
    checksums: Path | None = None


def page_title(manifest: dict, slug: str) -> str:
    """The report page's ``<title>`` (the browser tab's name): the manifest's title, else the
    report's file name, with control and invisible characters written out
    (:func:`replaybook._text.one_line`) as the page's heading shows them — a bidi override had
    disguised the tab's name."""
    from .._text import one_line

    return f"{one_line(manifest.get('title', slug))} — replaybook review"


def _slug(incident: Path) -> str:
    """The report's file name: the manifest's name (``jointrap.yaml`` → ``jointrap``), or its
    folder's name for the usual ``incident.yaml`` (``data/demo/incident.yaml`` → ``demo``), so two
    manifests in one folder never overwrite each other's report."""
    if incident.is_dir() or incident.stem in ("incident", ""):
        folder = incident if incident.is_dir() else incident.parent
        name = folder.resolve().name or "incident"
    else:
        name = incident.stem
    # letters and digits of any script are kept (``Vorfall März`` → ``Vorfall-März``); the rest,
    # spaces and path or shell characters among them, become "-"
    s = re.sub(r"[^\w.-]+", "-", unicodedata.normalize("NFC", name)).strip("-.")
    return s or "incident"


class ReportFiles(NamedTuple):
    """The three files :func:`render_report` writes for one incident into one folder.

    Attributes:
        ipynb: ``<slug>.ipynb``, the executed notebook.
        html: ``<slug>.html``, the self-contained report.
        checksums: ``<slug>.sha256``, every input's SHA-256 in ``sha256sum``'s format.
    """

    ipynb: Path
    html: Path
    checksums: Path


def report_files(incident: str | Path, out_dir: str | Path) -> ReportFiles:
    """Where :func:`render_report` would write ``incident``'s report in ``out_dir``, without
    writing anything (so a command can refuse a place before a kernel starts).

    The file name (the *slug*) is the manifest's name (``jointrap.yaml`` → ``jointrap``), or
    its folder's name for the usual ``incident.yaml`` (``data/demo/incident.yaml`` → ``demo``),
    with characters other than letters, digits, ``.`` and ``-`` written as ``-``.  Paths are
    returned as given (``~`` expanded), not resolved.
    """
    slug = _slug(Path(incident).expanduser())
    folder = Path(out_dir).expanduser()
    return ReportFiles(folder / f"{slug}.ipynb", folder / f"{slug}.html", folder / f"{slug}{SUFFIX}")


@contextlib.contextmanager
def _this_python_on_path():
    """Put this interpreter's folder first on PATH (and restore PATH afterwards)."""
    old = os.environ.get("PATH")
    bindir = os.path.dirname(sys.executable)
    os.environ["PATH"] = bindir + (os.pathsep + old if old else "")
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = old


def _this_python_kernel_manager(stderr_path: Path | None = None):
    """An nbclient kernel manager whose Python kernel is always ``sys.executable``.

    A ``python3`` kernelspec found first on the Jupyter path may name another interpreter by
    absolute path (a user-level ``~/.local/share/jupyter/kernels/python3``); PATH does not help
    then, so the spec's command is replaced by this interpreter's ``-m ipykernel_launcher``.

    With ``stderr_path`` the kernel process writes its own log there (appended) instead of to
    the terminal: ipykernel's start-up and shut-down lines ("Kernel is running over TCP without
    encryption", "KeyboardInterrupt caught in kernel" as it is stopped) say nothing about the
    report, and read as errors.  A cell's output goes to the notebook either way.
    """
    from jupyter_client.manager import AsyncKernelManager

    class ThisPythonKernelManager(AsyncKernelManager):
        @property
        def kernel_spec(self):
            spec = super().kernel_spec
            if spec is not None and (spec.language or "python").lower() == "python":
                spec.argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
            return spec

        async def _async_launch_kernel(self, kernel_cmd, **kw):  # (jupyter_client's hook for this)
            if stderr_path is None or "stderr" in kw:
                return await super()._async_launch_kernel(kernel_cmd, **kw)
            with open(stderr_path, "ab") as fh:  # (the child holds its own copy once started)
                return await super()._async_launch_kernel(kernel_cmd, stderr=fh, **kw)

    return ThisPythonKernelManager


def _tail(path: Path, lines: int = 15) -> str:
    """The last ``lines`` lines of a kernel's log, or ``""``."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _subclass_names(cls: type) -> set[str]:
    """The names of ``cls`` and its subclasses: the errors that mean bad evidence when ``cls``
    is :class:`~replaybook.errors.InputError` (a manifest naming the wrong files, an unreadable
    file), the user's to fix."""
    return {cls.__name__}.union(*(_subclass_names(c) for c in cls.__subclasses__()))


def _stamp(path: Path) -> tuple | None:
    """What tells whether ``path`` was written since: its inode, mtime (ns) and size; ``None``
    when nothing is there."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


def _lost_write(exc: BaseException, path: Path, written: Iterable[Path], before: dict[Path, tuple | None],
                only_path: bool = True) -> OSError | None:
    """When ``exc`` is the disk refusing a write (no space left, read-only, an I/O error), the
    files this run wrote (those of ``written`` changed since ``before``, their :func:`_stamp`
    at the start: a half-written file is no report) are removed and the error to raise is
    returned, naming ``path``; otherwise ``None``.  With ``only_path=False`` the failed step
    wrote other files too (papermill's run: the temporary folder, the kernel's connection
    file): the error is ``path``'s only when it names ``path``, or names no file and ``path``
    was written — a full temporary folder is not the report folder's, and an earlier report
    there is not this run's to remove."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_ERRNOS:
        return None
    if not only_path and exc.filename != str(path) and (exc.filename is not None or _stamp(path) == before.get(path)):
        return None
    for f in written:
        if _stamp(f) == before.get(f):  # (not written by this run: an earlier report stays)
            continue
        try:
            f.unlink(missing_ok=True)
        except OSError:
            pass
    return OSError(exc.errno, exc.strerror or os.strerror(exc.errno), str(path))


def _is_kernel_failure(exc: BaseException) -> bool:
    """A hang or a dead kernel (worth one more try), as opposed to an error in a cell."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    if isinstance(exc, (CellTimeoutError, DeadKernelError, TimeoutError)):
        return True
    if isinstance(exc, RuntimeError):
        msg = str(exc).lower()
        return "kernel" in msg and ("respond" in msg or "died" in msg or "dead" in msg or "timed out" in msg)
    return False


def _execute(template: Path, out_ipynb: Path, incident: Path, timeout: int, start_timeout: int,
             parameters: dict) -> None:
    """Run the template with papermill.  The kernel's own log goes to a temporary file, deleted
    afterwards; when the run fails, its last lines are added to the exception's notes
    (``__notes__``) for the error message.  The files this process has sniffed already (the
    CLI checks every file's list first) are handed to the kernel as verdicts
    (:func:`~replaybook.sources.registry.export_verdicts`, in a temporary file named by
    :data:`~replaybook.sources.registry.VERDICTS_ENV`), so it does not sniff them again."""
    import tempfile

    from ..sources import registry

    fd, name = tempfile.mkstemp(prefix="replaybook-kernel-", suffix=".log")
    os.close(fd)
    kernel_log = Path(name)
    fd, name = tempfile.mkstemp(prefix="replaybook-sniffed-", suffix=".json")
    os.close(fd)
    verdicts = Path(name)
    before = os.environ.get(registry.VERDICTS_ENV)
    try:
        if registry.export_verdicts(verdicts):
            os.environ[registry.VERDICTS_ENV] = str(verdicts)  # (the kernel inherits this environment)
        _run_papermill(template, out_ipynb, incident, timeout, start_timeout, kernel_log, parameters)
    except Exception as exc:
        tail = _tail(kernel_log)
        if tail:
            exc.add_note(f"the kernel's log ended:\n{tail}")
        raise
    finally:
        if before is None:
            os.environ.pop(registry.VERDICTS_ENV, None)
        else:
            os.environ[registry.VERDICTS_ENV] = before
        kernel_log.unlink(missing_ok=True)
        verdicts.unlink(missing_ok=True)


def _notes(exc: BaseException) -> str:
    """An exception's notes (:meth:`BaseException.add_note`), after a blank line; ``""`` for none."""
    notes = getattr(exc, "__notes__", None) or []
    return ("\n" + "\n".join(notes)) if notes else ""


def _parameters(template: Path, incident: Path, checksums: str) -> dict:
    """The papermill parameters for one run: the manifest's name, read from its folder (the
    kernel's working directory: the executed notebook is shared like the HTML, so the
    investigator's paths stay out), ``interactive=False`` and, when the template's parameters
    cell defines it, ``checksums``: the checksum file's name (only the name: it is written
    beside the HTML)."""
    import papermill as pm

    params = {"incident_path": incident.name, "interactive": False}
    try:
        declared = pm.inspect_notebook(str(template))
    except Exception:  # noqa: BLE001 - a template papermill cannot read fails in the run, with its reason
        declared = {}
    if "checksums" in declared:
        params["checksums"] = checksums
    return params


def _run_papermill(template: Path, out_ipynb: Path, incident: Path, timeout: int, start_timeout: int,
                   kernel_log: Path, parameters: dict) -> None:
    import papermill as pm

    with _this_python_on_path():
        pm.execute_notebook(
            str(template),
            str(out_ipynb),
            parameters=parameters,
            kernel_name=KERNELSPEC["name"],
            language="python",
            execution_timeout=timeout,
            start_timeout=start_timeout,
            kernel_manager_class=_this_python_kernel_manager(kernel_log),
            progress_bar=False,
            log_output=False,
            cwd=str(incident.parent),
        )
    _drop_paths(out_ipynb, template)


def _drop_paths(out_ipynb: Path, template: Path) -> None:
    """Replace the absolute paths papermill records in the executed notebook's metadata
    (``input_path``: the template; ``output_path``) by the template's name within the package
    (or its file name) and the notebook's file name."""
    nb = nbformat.read(str(out_ipynb), as_version=4)
    pm_meta = nb.metadata.get("papermill")
    if not pm_meta:
        return
    pm_meta["input_path"] = ("replaybook/report/" + template.name if template == REVIEW_NOTEBOOK
                             else template.name)
    pm_meta["output_path"] = out_ipynb.name
    nbformat.write(nb, str(out_ipynb))


def to_html(ipynb: str | Path, html_path: str | Path | None = None) -> Path:
    """Convert an executed report notebook to one self-contained HTML file with the offline
    template (no code inputs, no parameters cells, no external scripts).  Returns the HTML path
    (default: beside the notebook)."""
    from nbconvert import HTMLExporter
    from traitlets.config import Config

    ipynb = Path(ipynb)
    html_path = Path(html_path) if html_path else ipynb.with_suffix(".html")
    nb = nbformat.read(str(ipynb), as_version=4)
    nb.metadata.pop("widgets", None)  # a widget snapshot without its manager shows nothing
    c = Config()
    c.TagRemovePreprocessor.remove_cell_tags = set(REMOVE_TAGS)
    c.TagRemovePreprocessor.enabled = True
    exporter = HTMLExporter(
        config=c,
        template_name=TEMPLATE_NAME,
        extra_template_basedirs=[str(TEMPLATE_DIR)],
        exclude_input=True,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
        embed_images=True,
    )
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": ipynb.stem}})
    html_path.write_text(body, encoding="utf-8")
    return html_path


def render_report(
    incident: str | Path,
    out_dir: str | Path,
    *,
    template: str | Path | None = None,
    timeout: int = 600,
    retries: int = 1,
    start_timeout: int = 120,
) -> ReportPaths:
    """Execute the review template for one incident and write ``<slug>.ipynb``, ``<slug>.html``
    and ``<slug>.sha256`` (every input's SHA-256, one ``<hex>  <path>`` line each, paths as the
    Inputs section shows them: ``cd`` to the manifest's folder and ``sha256sum -c`` it).

    Args:
        incident: the incident's ``incident.yaml`` (or another manifest) or its folder; the file
            name is the manifest's name, or the folder's for ``incident.yaml`` (see
            :func:`report_files`).
        out_dir: folder for the outputs (created if missing).
        template: the papermill template notebook (default: ``replaybook/report/review.ipynb``);
            it must have a cell tagged ``parameters`` defining ``incident_path`` and ``interactive``.
        timeout: execution timeout per cell, seconds (papermill/nbclient ``execution_timeout``).
        retries: extra executions after a kernel hang (cell timeout) or death.
        start_timeout: seconds to wait for the kernel to start.

    Returns:
        :class:`ReportPaths` with ``.ipynb``, ``.html`` and ``.checksums`` (``None``, and no
        earlier ``<slug>.sha256`` left beside the new HTML, when the template does not display
        :func:`~replaybook.report.checksums.checksum_entries`).

    Raises:
        ManifestError: the manifest is missing or invalid (checked before any kernel starts).
        ReportError: the output folder cannot be made, the template is missing, a cell raised,
            the kernel hung or died on every attempt, or the HTML conversion failed.
        OSError: the disk refused to write a report file (no space left, read-only, an I/O
            error; ``filename`` names the file): the files this run wrote are removed, none is
            left half-written.
    """
    from ..incident import load_manifest

    t0 = time.perf_counter()
    incident = Path(incident).expanduser().resolve()
    manifest = load_manifest(incident)  # raises ManifestError early
    incident_file = incident / "incident.yaml" if incident.is_dir() else incident
    template = Path(template).expanduser().resolve() if template else REVIEW_NOTEBOOK
    if not template.is_file():
        raise ReportError(f"report template notebook not found: {template}")
    out_dir = Path(out_dir).expanduser().resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ReportError(f"cannot make the report folder {out_dir}: {exc.strerror or exc}") from None
    slug = _slug(incident)
    out_ipynb, out_html, out_sums = report_files(incident, out_dir)
    parameters = _parameters(template, incident_file, out_sums.name)
    before = {p: _stamp(p) for p in (out_ipynb, out_html, out_sums)}  # (what this run writes: see _lost_write)

    attempts = 0
    last: BaseException | None = None
    while attempts <= max(0, retries):
        attempts += 1
        try:
            _execute(template, out_ipynb, incident_file, timeout, start_timeout, parameters)
            last = None
            break
        except ReplaybookError:
            raise
        except Exception as exc:  # noqa: BLE001 - classified below
            lost = _lost_write(exc, out_ipynb, [out_ipynb], before, only_path=False)  # (papermill writes it as cells run)
            if lost is not None:
                raise lost from None
            if _is_kernel_failure(exc):
                last = exc
                log.warning("report kernel attempt %d failed (%s: %s)", attempts, type(exc).__name__, exc)
                continue
            try:
                from papermill.exceptions import PapermillExecutionError
            except ImportError:  # pragma: no cover
                PapermillExecutionError = ()  # type: ignore[assignment]
            if isinstance(exc, PapermillExecutionError) and exc.ename in _subclass_names(InputError):
                # the evidence, not the report, is at fault: a user error (exit 2), as the CLI's
                # own loaders would say it
                out_ipynb.unlink(missing_ok=True)  # a half-run notebook is no report
                raise InputError(f"{exc.evalue} (no report written: the notebook stopped in cell "
                                 f"{exc.exec_count})") from exc
            if isinstance(exc, PapermillExecutionError):
                raise ReportError(
                    f"report notebook failed in cell {exc.exec_count} ({exc.ename}: {exc.evalue}); "
                    f"the partly executed notebook is {out_ipynb}"
                ) from exc
            raise ReportError(f"report execution failed: {type(exc).__name__}: {exc}{_notes(exc)}") from exc
    if last is not None:
        raise ReportError(
            f"report kernel hung or died on all {attempts} attempt(s) (execution timeout {timeout} s per cell): "
            f"{type(last).__name__}: {last}{_notes(last)}"
        ) from last

    # kernelspec / language_info: papermill keeps the template's, nbclient fills language_info;
    # make sure both are there (a notebook without them needs `-k python3 -l python` to rerun).
    nb = nbformat.read(str(out_ipynb), as_version=4)
    nb.metadata["kernelspec"] = dict(KERNELSPEC, **{k: v for k, v in nb.metadata.get("kernelspec", {}).items()
                                                     if k in ("display_name",)})
    li = dict(nb.metadata.get("language_info") or {})
    li.setdefault("name", "python")
    li.setdefault("version", ".".join(map(str, sys.version_info[:3])))
    nb.metadata["language_info"] = li
    nb.metadata["title"] = page_title(manifest, slug)
    try:
        nbformat.write(nb, str(out_ipynb))
    except OSError as exc:
        if (lost := _lost_write(exc, out_ipynb, [out_ipynb], before)) is None:
            raise
        raise lost from None
    findings = _findings(nb)

    try:
        to_html(out_ipynb, out_html)
    except Exception as exc:  # noqa: BLE001
        if (lost := _lost_write(exc, out_html, [out_ipynb, out_html], before)) is not None:
            raise lost from None
        raise ReportError(f"HTML conversion of {out_ipynb} failed: {type(exc).__name__}: {exc}") from exc
    try:
        sums = _write_checksums(nb, out_sums)
    except OSError as exc:
        if (lost := _lost_write(exc, out_sums, [out_ipynb, out_html, out_sums], before)) is None:
            raise
        raise lost from None
    return ReportPaths(ipynb=out_ipynb, html=out_html, seconds=time.perf_counter() - t0, attempts=attempts,
                       findings=findings, checksums=sums)


def _write_checksums(nb, dest: Path) -> Path | None:
    """Write the checksum entries the executed notebook displayed (``CHECKSUMS_MIME``) to
    ``dest`` in ``sha256sum`` format and return ``dest``; with none displayed, remove an earlier
    ``dest`` (it would describe another run's inputs) and return ``None``.

    Raises:
        ReportError: the entries are malformed or ``dest`` cannot be written."""
    entries = _displayed(nb, CHECKSUMS_MIME, list)
    if entries is None:
        dest.unlink(missing_ok=True)
        return None
    try:
        write_sha256sum(entries, dest)
    except OSError as exc:
        if exc.errno in DISK_ERRNOS:
            raise  # (the disk: see _lost_write)
        raise ReportError(f"cannot write the inputs' checksum file {dest}: {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise ReportError(f"cannot write the inputs' checksum file {dest}: {exc}") from exc
    return dest


def _findings(nb) -> dict | None:
    """The last ``findings`` output (``sections.SUMMARY_MIME``) of an executed notebook."""
    from .sections import SUMMARY_MIME

    found = _displayed(nb, SUMMARY_MIME, dict)
    return None if found is None else dict(found)


def _displayed(nb, mime: str, kind: type):
    """The last output of type ``mime`` in an executed notebook whose value is a ``kind``
    (``dict``, ``list``), or ``None``."""
    found = None
    for cell in nb.cells:
        for o in cell.get("outputs", ()):
            data = o.get("data") or {}
            if mime in data and isinstance(data[mime], kind):
                found = data[mime]
    return found
