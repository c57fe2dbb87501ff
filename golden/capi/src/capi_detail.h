// Shared by the C API's translation units: the boundary where C's ints, pointers and
// lengths become golden's typed arguments, and where every exception becomes a status.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "nibble/formats.h"
#include "nibble/nibble_golden.h"
#include "nibble/quantize.h"
#include "nibble/scale.h"

namespace nibble::capi {

// Thrown inside the C API for input it rejects before calling golden.
struct ApiError {
  int status;
  std::string message;
};
[[noreturn]] void fail(int status, std::string message);

// Records the calling thread's last error (prefixed with the function's name) and
// returns status; clear_error() records a success.
int set_error(int status, const char* function, const char* message) noexcept;
void clear_error() noexcept;
const char* last_error() noexcept;

// Runs body, translating every exception into a status and a message.
template <class Body>
int guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    clear_error();
    return NIBBLE_OK;
  } catch (const ApiError& e) {
    return set_error(e.status, function, e.message.c_str());
  } catch (const std::invalid_argument& e) {
    return set_error(NIBBLE_ERR_INVALID_ARGUMENT, function, e.what());
  } catch (const std::bad_alloc&) {
    return set_error(NIBBLE_ERR_OUT_OF_MEMORY, function, "out of memory");
  } catch (const std::exception& e) {
    return set_error(NIBBLE_ERR_INTERNAL, function, e.what());
  } catch (...) {
    return set_error(NIBBLE_ERR_INTERNAL, function, "unknown exception");
  }
}

void require_pointer(const void* p, const char* name);

// C enum values -> golden's enums (NIBBLE_ERR_INVALID_ENUM when out of range).
Format to_format(int v);
ScaleFormat to_scale_format(int v);
ScaleMode to_scale_mode(int v);
Rounding to_rounding(int v);
BlockShape to_block_shape(int v);
ZeroPolicy to_zero_policy(int v);
NonFinitePolicy to_nonfinite_policy(int v);
QuantPolicy to_policy(const nibble_quant_policy* p);
// The configuration with its policy (default policies for the version-1 entry points).
QuantConfig to_config(const nibble_quant_config* c, const QuantPolicy& policy = QuantPolicy{});

// An element code (0..15) and a scale code in its format's range, or NIBBLE_ERR_INVALID_ARGUMENT.
uint8_t checked_code(uint32_t code);
uint32_t checked_scale_code(ScaleFormat f, uint32_t code);

// a * b for non-negative sizes, or NIBBLE_ERR_SIZE when it overflows int64_t or size_t.
int64_t checked_mul(int64_t a, int64_t b, const char* what);

// Golden's view of a C quantized tensor (codes and scales copied and range-checked).
QuantizedTensor to_quantized(const nibble_quantized* q, const char* name);

}  // namespace nibble::capi
