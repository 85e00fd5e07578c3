"""CLI commands, one module each (see ov3d_core.cli)."""
