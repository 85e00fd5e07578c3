"""Exports of a scene to other tools (``rerun``: a Rerun ``.rrd`` recording). Each exporter imports its tool only
when it is called."""
