// Default paths: where braked keeps its socket and database when no flag or
// environment variable says otherwise. Usable without root.
//
// Socket: $XDG_RUNTIME_DIR/brake/braked.sock, else /tmp/brake-$UID/braked.sock.
// Database: $XDG_STATE_HOME/brake/brake.db, else $HOME/.local/state/brake/
// brake.db, else /tmp/brake-$UID/brake.db. Any thread.
#pragma once

#include <string>

#include "common/status.h"

namespace brake {

std::string DefaultDbPath();
// Creates the directory that will hold `file_path` (and its parents), the
// last one with mode 0700 when it is new.
Status EnsureParentDir(const std::string& file_path);

}  // namespace brake
