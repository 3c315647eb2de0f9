// Kernel errors as MindSpore's own exceptions, for the entries that run inside MindSpore's tasks (graph
// kernels, PYNATIVE device tasks): there a std::exception arrives in Python as "Unknown Error!",
// while MindSpore's exceptions keep their type and text on every path back to Python.
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RAISE_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RAISE_H_

#include <stdexcept>

#include "utils/log_adapter.h"

namespace msmc {
namespace route {

// ValueError for std::invalid_argument (bad input), RuntimeError for anything else; the text is kept.
[[noreturn]] inline void RaiseInFramework(const std::exception &e) {
  if (dynamic_cast<const std::invalid_argument *>(&e) != nullptr) {
    MS_EXCEPTION(mindspore::ValueError) << e.what();
  }
  MS_EXCEPTION(mindspore::RuntimeError) << e.what();
}

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RAISE_H_
