// Latency-insensitive point-to-point channels in the spirit of MatchLib's
// Connections: a producer Push()es, a consumer Pop()s, both from clocked
// threads of one clock. Built on sc_fifo: a message pushed in cycle c can be
// popped in cycle c + 1, and the slot a pop frees is writable in the next cycle,
// so a depth-2 channel moves one message per cycle. The *NB forms never wait.
#pragma once

#include <systemc.h>

#include <cstdint>
#include <random>

namespace nibble::model {

template <class T>
class Channel {
 public:
  explicit Channel(const char* name, int depth = 2) : fifo_(name, depth) {}
  bool PushNB(const T& m) { return fifo_.nb_write(m); }
  bool PopNB(T& m) { return fifo_.nb_read(m); }
  // Blocking forms: wait a clock per failed try (call from an SC_CTHREAD).
  void Push(const T& m) {
    while (!fifo_.nb_write(m)) sc_core::wait();
  }
  T Pop() {
    T m;
    while (!fifo_.nb_read(m)) sc_core::wait();
    return m;
  }

 private:
  sc_core::sc_fifo<T> fifo_;
};

// Random stalls for tests: before each transfer, wait a clock with probability p.
class StallInjector {
 public:
  StallInjector(double p, uint64_t seed) : p_(p), rng_(seed) {}
  void maybe_stall() {
    if (p_ <= 0.0) return;
    std::bernoulli_distribution d(p_);
    while (d(rng_)) sc_core::wait();
  }

 private:
  double p_;
  std::mt19937_64 rng_;
};

}  // namespace nibble::model
