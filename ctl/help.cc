#include "ctl/help.h"

#include "ctl/table.h"

namespace brake::ctl {

void WriteHelp(std::ostream& out, const std::string& socket_default) {
  out << "usage: brakectl [--socket PATH] [--json] [--timeout-ms N] COMMAND "
         "[ARGS...]\n\n"
         "Operator CLI of braked, the gate AI agents ask before each LLM or "
         "tool call.\n\nCommands:\n";
  Table commands;
  commands.AddRow(
      {"  help [COMMAND]", "this text, or the arguments of COMMAND"});
  for (const CommandSpec& c : Commands()) {
    std::string summary(c.summary);
    if (c.admin) summary += " (admin)";
    commands.AddRow({"  " + std::string(c.name), summary});
  }
  commands.Render(out);
  out << "\nOptions (before or after the command):\n";
  Table options;
  options.AddRow(
      {"  --socket PATH", "braked's socket (default: " + socket_default + ")"});
  options.AddRow({"  --json", "print the daemon's reply line unchanged"});
  options.AddRow(
      {"  --timeout-ms N",
       "give up after N ms (default 10000; acquire adds --wait-ms)"});
  options.AddRow({"  --version", "print brakectl's version"});
  options.Render(out);
  out << "\nExit status: 0 ok, 1 error (unreachable, \"ok\":false, I/O), "
         "2 usage, 3 denied.\n"
         "Run 'brakectl help COMMAND' for the arguments of a command.\n";
}

void WriteCommandHelp(const CommandSpec& command, std::ostream& out) {
  out << "usage: brakectl " << Synopsis(command) << "\n\n"
      << command.summary << ".\n"
      << "Sends op \"" << command.op << "\""
      << (command.admin ? "; allowed to admin peers only" : "") << ".\n";
  if (command.args.empty()) return;
  out << "\nArguments:\n";
  Table table;
  for (const ArgSpec& a : command.args) {
    std::string name = a.flag.empty()
                           ? std::string(a.metavar)
                           : std::string(a.flag) + " " + std::string(a.metavar);
    std::string help(a.help);
    if (a.required && !a.flag.empty()) help += " (required)";
    table.AddRow({"  " + name, help});
  }
  table.Render(out);
}

void WriteGroupHelp(std::string_view group, std::ostream& out) {
  out << "usage:\n";
  for (const CommandSpec& c : Commands()) {
    std::string_view name = c.name;
    if (name.size() > group.size() && name.substr(0, group.size()) == group &&
        name[group.size()] == ' ') {
      out << "  brakectl " << Synopsis(c) << '\n';
    }
  }
}

}  // namespace brake::ctl
