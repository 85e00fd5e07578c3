from ov3d_core.cli import main

raise SystemExit(main())
