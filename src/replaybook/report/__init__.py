"""The review report: a papermill template notebook rendered to one offline HTML file.

``render_report(incident, out_dir)`` → :class:`ReportPaths` (``.ipynb``, ``.html``, ``.checksums``:
the inputs' ``sha256sum`` file, :mod:`.checksums`).
``sections`` builds each part of the report as escaped HTML (the notebook's cells call it).
"""

from .render import ReportPaths, render_report, to_html

__all__ = ["render_report", "ReportPaths", "to_html"]
