"""Views: render replaybook's results (they compute nothing themselves).

``charts`` holds static Altair charts and an offline HTML helper; it never imports ipywidgets.
"""

from .charts import chart_html, timeline

__all__ = ["timeline", "chart_html"]
