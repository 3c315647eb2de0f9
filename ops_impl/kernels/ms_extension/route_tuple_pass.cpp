// The op_def route's graph pass, and the module as the MindSpore pass plugin that provides it.
//
// A graph hands an op a variadic input as a tuple (a MakeTuple of the tensors). On Ascend, MindSpore
// unfolds such a tuple into one kernel input per tensor only for a fixed list of primitives (its
// ops.Custom among them, not the Custom_<op> primitives of a CustomOpBuilder op_def); for any other
// node its InsertTypeTransformOp folds the tuple into one new contiguous tensor (RealMakeTuple). The
// kernel would then get a temporary copy instead of the tensors, and in-place writes into it would be
// lost. This pass unfolds the tuple inputs of the route's ops with a variadic input (configs/ops/*.yaml)
// before kernel selection, with MindSpore's own ConvertMakeTupleInputToPlantInputs, so that their
// kernels get the tensors themselves.
//
// ms_memcopy.op_def_route.load() registers it with mindspore.graph.register_custom_pass, naming this
// module as the plugin; MindSpore runs it on the graphs compiled after that (default ms_backend).
#include <cstddef>
#include <memory>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "mindspore/include/custom_pass_api.h"
#include "route_common.h"
#include "route_ops.inc"

namespace msmc {
namespace route {
namespace {

using mindspore::AnfNodePtr;
using mindspore::CNode;
using mindspore::CNodePtr;
using mindspore::FuncGraphPtr;
using mindspore::PrimitivePtr;

// Custom_<op> of every op of the table with a variadic input.
const std::set<std::string> &PrimitivesWithTupleInput() {
  static const std::set<std::string> names = [] {
    std::set<std::string> found;
#define MSMC_ADD_IF_VARIADIC(NAME, OP_DEF)                   \
  if (FindArg(FindRouteOp(#NAME), ArgKind::kTensors) >= 0) { \
    found.insert("Custom_" #OP_DEF);                         \
  }
    MSMC_ROUTE_OPS(MSMC_ADD_IF_VARIADIC)
#undef MSMC_ADD_IF_VARIADIC
    return found;
  }();
  return names;
}

class UnfoldTupleInputsPass : public mindspore::opt::NodePass {
 public:
  UnfoldTupleInputsPass() : NodePass(MSMC_TUPLE_PASS_NAME) {}

  // The node to put in place of `node` (its copy with the tuple's elements as inputs), or nullptr.
  AnfNodePtr Run(const FuncGraphPtr &graph, const AnfNodePtr &node) override {
    if (node == nullptr || !node->isa<CNode>()) {
      return nullptr;
    }
    const CNodePtr cnode = node->cast<CNodePtr>();
    const PrimitivePtr primitive = mindspore::common::AnfAlgo::GetCNodePrimitive(cnode);
    if (primitive == nullptr || PrimitivesWithTupleInput().count(primitive->name()) == 0) {
      return nullptr;
    }
    return mindspore::opt::ConvertMakeTupleInputToPlantInputs(graph, cnode);
  }
};

class RoutePassPlugin : public mindspore::opt::CustomPassPlugin {
 public:
  // EXPORT_CUSTOM_PASS_PLUGIN's extern "C" CreatePlugin allocates the plugin with `new`: this
  // allocation returns nullptr instead of throwing across that C interface.
  static void *operator new(std::size_t size) noexcept { return ::operator new(size, std::nothrow); }
  static void operator delete(void *plugin) noexcept { ::operator delete(plugin, std::nothrow); }

  std::string GetPluginName() const override { return "ms_memcopy_route"; }

  std::vector<std::string> GetAvailablePassNames() const override { return {MSMC_TUPLE_PASS_NAME}; }

  std::shared_ptr<mindspore::opt::Pass> CreatePass(const std::string &pass_name) const override {
    if (pass_name != MSMC_TUPLE_PASS_NAME) {
      return nullptr;
    }
    return std::make_shared<UnfoldTupleInputsPass>();
  }
};

}  // namespace
}  // namespace route
}  // namespace msmc

EXPORT_CUSTOM_PASS_PLUGIN(msmc::route::RoutePassPlugin)
