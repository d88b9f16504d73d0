"""The review report: a papermill template notebook rendered to one offline HTML file.

``render_report(incident, out_dir)`` → :class:`ReportPaths` (``.ipynb``, ``.html``, ``.checksums``:
the inputs' ``sha256sum`` file, :mod:`.checksums`); ``report_files(incident, out_dir)`` names
those files before anything is written.
``sections`` builds each part of the report as escaped HTML (the notebook's cells call it).
"""

from .render import ReportFiles, ReportPaths, render_report, report_files, to_html

__all__ = ["render_report", "report_files", "ReportFiles", "ReportPaths", "to_html"]
