// RunBraked: all of braked but its main (daemon/main.cc).
#pragma once

namespace brake {

// Parses the command line, prepares the process and runs the daemon until
// it stops; returns the exit code.
int RunBraked(int argc, char** argv);

}  // namespace brake
