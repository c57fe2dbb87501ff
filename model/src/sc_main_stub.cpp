// libsystemc.so defines main() and refers to sc_main. Nibble's programs and
// tests have their own main() and start simulations from library code, so
// nothing calls sc_main; this definition only satisfies the linker. It sits in
// its own object of the static library: a program that defines its own
// sc_main (a Verilator --sc harness) never pulls it in.
#include <cstdio>

// SystemC declares it extern "C" (sysc/kernel/sc_externs.h).
extern "C" int sc_main(int, char**) {
  std::fprintf(stderr, "nibble: sc_main is not an entry point of this program\n");
  return 1;
}
