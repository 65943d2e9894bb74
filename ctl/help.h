// brakectl's help text, generated from the command table (commands.h) so
// that it cannot drift from what the parser accepts.
//
// Pure writers to a stream; any thread.
#pragma once

#include <ostream>
#include <string>
#include <string_view>

#include "ctl/commands.h"

namespace brake::ctl {

// The overview: synopsis, every command with its summary, the global
// options (`socket_default` describes where the socket is looked for) and
// the exit codes.
void WriteHelp(std::ostream& out, const std::string& socket_default);

// One command: its synopsis, summary, wire op and each argument.
void WriteCommandHelp(const CommandSpec& command, std::ostream& out);

// The synopses of the commands of a group such as "policy".
void WriteGroupHelp(std::string_view group, std::ostream& out);

}  // namespace brake::ctl
