from ov3d_core.cli import entry

entry()
