"""Engine adapters, registered by kind: `registry.py` imports the built-in ones and looks them up."""
