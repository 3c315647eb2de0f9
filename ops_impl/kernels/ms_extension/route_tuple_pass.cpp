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
// It also unfolds the constant tuple[int] arguments of the route's ops (listInt attributes, the given
// output shapes, ranks and dtypes of the h2d forms) into scalar constants: MindSpore would unfold each
// after kernel selection into one RealTupleGetItem kernel per element, run at every graph step.
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

// Whether op has a tuple[int] argument (a listInt attribute, given output shapes, ranks or dtypes).
bool HasIntsArg(const RouteOp &op) {
  for (int a = 0; a < op.nargs; ++a) {
    const ArgKind kind = op.args[a].kind;
    if (kind == ArgKind::kInts || kind == ArgKind::kGivenShape || kind == ArgKind::kGivenShapes ||
        kind == ArgKind::kGivenRanks || kind == ArgKind::kGivenDtypes) {
      return true;
    }
  }
  return false;
}

// Custom_<op> of every op of the table with a tuple[int] argument.
const std::set<std::string> &PrimitivesWithIntsInput() {
  static const std::set<std::string> names = [] {
    std::set<std::string> found;
#define MSMC_ADD_IF_INTS(NAME, OP_DEF)  \
  if (HasIntsArg(FindRouteOp(#NAME))) { \
    found.insert("Custom_" #OP_DEF);    \
  }
    MSMC_ROUTE_OPS(MSMC_ADD_IF_INTS)
#undef MSMC_ADD_IF_INTS
    return found;
  }();
  return names;
}

// A copy of cnode whose constant tuple inputs are replaced by their elements, one scalar value node
// each (dyn_input_sizes records the grouping), or nullptr when it has none. Left to MindSpore, a
// constant tuple[int] is unfolded after kernel selection into one RealTupleGetItem kernel per
// element, launched at every step; the kernel gets the same flattened inputs either way.
AnfNodePtr UnfoldConstantTuples(const FuncGraphPtr &graph, const CNodePtr &cnode) {
  std::vector<AnfNodePtr> inputs{cnode->input(0)};
  std::vector<int64_t> dyn_input_sizes;
  bool unfolded = false;
  for (size_t i = 1; i < cnode->size(); ++i) {
    const AnfNodePtr &input = cnode->input(i);
    if (mindspore::IsMonad(input)) {
      inputs.push_back(input);
      continue;
    }
    const auto tuple = mindspore::GetValueNode<mindspore::ValueTuplePtr>(input);
    if (tuple == nullptr) {
      inputs.push_back(input);
      dyn_input_sizes.push_back(-1);
      continue;
    }
    for (const mindspore::ValuePtr &element : tuple->value()) {
      inputs.push_back(mindspore::opt::CreateValueNodeWithKernelInfo(graph, element));
    }
    dyn_input_sizes.push_back(static_cast<int64_t>(tuple->size()));
    unfolded = true;
  }
  if (!unfolded) {
    return nullptr;
  }
  const CNodePtr node = mindspore::opt::NewCNode(inputs, graph, {cnode});
  node->set_abstract(cnode->abstract());
  node->set_scope(cnode->scope());
  node->set_attrs(cnode->attrs());
  node->set_primal_attrs(cnode->primal_attrs());
  mindspore::common::AnfAlgo::SetNodeAttr("dyn_input_sizes", mindspore::MakeValue(dyn_input_sizes), node);
  return node;
}

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
    if (primitive == nullptr) {
      return nullptr;
    }
    if (PrimitivesWithIntsInput().count(primitive->name()) != 0) {
      return UnfoldConstantTuples(graph, cnode);
    }
    if (PrimitivesWithTupleInput().count(primitive->name()) == 0) {
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
