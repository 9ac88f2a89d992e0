"""``python -m entity_resolver.build OUT_DIR``: write the extension files (make extension)."""

import sys

from entity_resolver.build.extension import main

sys.exit(main())
