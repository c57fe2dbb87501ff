// The training study's definition file (nibble train-study --study): the reader
// raises only StudyError, whatever the text.
#include <cstdint>
#include <string>

#include "nibble/train/study.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    (void)nibble::train::parse_study(std::string(reinterpret_cast<const char*>(data), size), "input");
  } catch (const nibble::train::StudyError&) {
  }
  return 0;
}
