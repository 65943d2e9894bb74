// braked: the brake daemon. All of it lives in brake_daemon_lib.
#include "daemon/process.h"

int main(int argc, char** argv) { return brake::RunBraked(argc, argv); }
