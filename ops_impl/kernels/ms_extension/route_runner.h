// The eager launch of an op: a PyboostRunner queued in MindSpore's PYNATIVE queues (Dispatch) whose
// launch runs the op's body with the call's arguments (route_pynative.cpp describes the entries).
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_

#include <memory>
#include <vector>

#include "route_async_launch.h"
#include "route_eager_args.h"

namespace msmc {
namespace route {

// Queues the call's launch after MindSpore's queued work and returns its outputs (Python tensors whose
// values the launch writes); async: a transfer queue's launch (CPU target), else nullptr.
py::object Dispatch(const RouteOp &op, const OpBody &body, const std::shared_ptr<KernelState> &state,
                    std::vector<ArgValue> values, std::shared_ptr<AsyncLaunch> async = nullptr);

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_
