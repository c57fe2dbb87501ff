// Quoting for the command lines Nibble runs (Yosys, Python, gnuplot) and
// records (the command behind a training run): one word for a POSIX shell.
#pragma once

#include <string>

namespace nibble::io {

// s in single quotes, each ' written as '\'' : the shell reads it back as s.
std::string shell_quote(const std::string& s);

}  // namespace nibble::io
