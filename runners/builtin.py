"""Imports every built-in runner kind so each registers itself under its `kind`."""

import runners.local
import runners.noop  # noqa: F401
