// Builds without libtorch's NCCL process group: no data-parallel training.
#include <stdexcept>

#include "distributed.h"
#include "nibble/train/trainer.h"

namespace nibble::train {

std::unique_ptr<Collectives> make_nccl_collectives(const std::string&, int, int) {
  throw std::runtime_error("this build has no NCCL process group (libtorch with CUDA and NCCL's header nccl.h), "
                           "so it cannot train over several GPUs");
}
bool data_parallel_built() { return false; }

}  // namespace nibble::train
