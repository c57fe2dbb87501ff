/* Quantizes one 1x16 E2M1 block through the installed C API and checks golden's
 * answer: the block holds every E2M1 value, so with an fp32 scale of 6/6 = 1 each
 * element keeps its own code (zero magnitudes become code 0 under the default zero
 * policy, and keep their sign under the signed one: API version 2). Exit status 0 = pass. */
#include <stdio.h>
#include <string.h>

#include "nibble/nibble_golden.h"

static int check(int ok, const char* what) {
  if (!ok) fprintf(stderr, "FAIL: %s (%s)\n", what, nibble_last_error());
  return ok ? 0 : 1;
}

int main(void) {
  int failures = 0;
  int checked = 0;
  float x[16];
  uint8_t codes[16];
  uint32_t scale = 0;
  float value = 0.0f;
  nibble_quant_config cfg;
  nibble_quant_policy policy;
  int i;

  failures += check(nibble_golden_api_version() == NIBBLE_GOLDEN_API_VERSION, "API version");
  failures += check(nibble_quant_config_init(&cfg) == NIBBLE_OK, "config defaults");
  cfg.format = NIBBLE_FMT_E2M1;
  cfg.block_shape = NIBBLE_BLOCK_1X16;
  cfg.scale_mode = NIBBLE_SCALE_MODE_FP32;
  cfg.rounding = NIBBLE_ROUND_NEAREST_EVEN;
  for (i = 0; i < 16; ++i) {
    failures += check(nibble_element_decode(NIBBLE_FMT_E2M1, (uint8_t)i, &x[i]) == NIBBLE_OK, "decode");
  }
  failures += check(x[7] == 6.0f && x[15] == -6.0f, "E2M1 codes 0x7 and 0xF are +-6");
  failures += check(nibble_quantize_block(&cfg, x, 16, codes, &scale, NULL, NULL) == NIBBLE_OK, "quantize");
  failures += check(scale == 0x3F800000u, "fp32 block scale 1.0");
  for (i = 0; i < 16; ++i) {
    failures += check(codes[i] == (i == 8 ? 0 : i), "element code");
    ++checked;
  }
  /* The signed-zero policy keeps code 0x8 (-0), as IEEE, OCP MX, CUDA and Transformer Engine do. */
  failures += check(nibble_quant_policy_init(&policy) == NIBBLE_OK, "policy defaults");
  policy.zero = NIBBLE_ZERO_SIGNED;
  failures += check(nibble_quantize_block_with_policy(&cfg, &policy, x, 16, codes, &scale, NULL, NULL) == NIBBLE_OK,
                    "quantize with a policy");
  for (i = 0; i < 16; ++i) {
    failures += check(codes[i] == i, "element code under the signed-zero policy");
    ++checked;
  }
  failures += check(nibble_scale_decode(NIBBLE_SCALE_FMT_UE8M0, 127u, &value) == NIBBLE_OK && value == 1.0f,
                    "UE8M0 code 127 is 1.0");
  /* Bad input is a status and a message, never a crash. */
  failures += check(nibble_quantize_block(&cfg, x, 15, codes, &scale, NULL, NULL) == NIBBLE_ERR_SIZE,
                    "a 15-element 1x16 block is rejected");
  failures += check(strstr(nibble_last_error(), "count") != NULL, "the message names the count");

  printf("nibble consumer: %s, %d codes checked, %d failures\n", nibble_format_name(cfg.format), checked, failures);
  return failures == 0 && checked == 32 ? 0 : 1;
}
