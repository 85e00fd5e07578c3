"""Plotly figure builders for the app and reports.

Every builder takes arrays or finished result tables and returns a ``plotly.graph_objects.Figure``; nothing here
computes a metric or imports streamlit (reference/code_anchors.md, "What to take" 10).

- ``image_overlay``: an image with projected 3D box edges, heading markers and labels, one trace group per status.
- ``scene3d``: a point cloud with the same boxes and the camera frustum.
- ``heatmap``: a clickable confusion matrix drawn as a scatter of squares, plus a static heatmap for export.
- ``bars``: per-category AP bars, leaderboard and three-axis charts, deltas and distributions.
- ``export``: figure -> PNG / SVG / HTML bytes, table -> CSV / LaTeX.
"""
