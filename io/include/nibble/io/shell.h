// The command lines Nibble runs (Yosys, Python, OpenSTA, gnuplot) and records (the command
// behind a training run): quoting one word for a POSIX shell, finding and running a program.
#pragma once

#include <string>

namespace nibble::io {

// s in single quotes, each ' written as '\'' : the shell reads it back as s.
std::string shell_quote(const std::string& s);
// An executable: a path with a separator is taken as it is; a bare name is looked up on PATH.
// Empty where there is none.
std::string find_executable(const std::string& name);
// Runs a shell command, returning its exit status and its combined output.
int run_command(const std::string& cmd, std::string& output);

}  // namespace nibble::io
