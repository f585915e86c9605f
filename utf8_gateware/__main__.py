from utf8_gateware.cli import main

raise SystemExit(main())
