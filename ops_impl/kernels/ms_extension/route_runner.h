// The eager launch of an op: a PyboostRunner queued in MindSpore's PYNATIVE queues (Dispatch) whose
// launch runs the op's body with the call's arguments (route_pynative.cpp describes the entries).
#ifndef MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_
#define MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_

#include <memory>
#include <vector>

#include "route_eager_args.h"
#include "transfer_streams.h"

namespace msmc {
namespace route {

using TicketPtr = std::shared_ptr<TransferTicket>;

// Queues the call's launch after MindSpore's queued work and returns its outputs (Python tensors whose
// values the launch writes); ticket: an asynchronous form's call (KernelInstance.submit_transfer), which
// the launch fills in with the ring slot its transfer took, else nullptr.
py::object Dispatch(const RouteOp &op, const OpBody &body, const std::shared_ptr<KernelState> &state,
                    std::vector<ArgValue> values, TicketPtr ticket = nullptr);

}  // namespace route
}  // namespace msmc

#endif  // MS_MEMCOPY_KERNELS_MS_EXTENSION_ROUTE_RUNNER_H_
