# The daemon's version (CMakeLists.txt's project VERSION); a test keeps the
# two equal.
__version__ = "0.1.0"
