// LayerRole: what one attention layer owns and what it borrows, the generic
// vocabulary behind every family's mode names. A model file maps roles to the
// names its papers use (V4.1: Full / Reindex / Reuse; V4: CSA / HCA; V3.2:
// DSA; V3: MLA; Llama: GQA), so no family is special-cased in code.
#pragma once

#include <optional>
#include <string_view>

namespace v41sim {

enum class LayerRole {
  kWindowOnly,  // sliding-window KV only, no global KV (V4 / V4.1 ratio-0 layers)
  kOwnIndexed,  // owns global KV and index keys, selects its own top-k
  kOwnDense,    // owns global KV, attends to all of it (no indexer)
  kReindex,     // borrows KV and index keys, scores with its own indexer query
  kReuse,       // borrows KV and the top-k indices as they are
};

inline constexpr LayerRole kAllLayerRoles[] = {LayerRole::kWindowOnly, LayerRole::kOwnIndexed,
                                               LayerRole::kOwnDense, LayerRole::kReindex, LayerRole::kReuse};

std::string_view role_key(LayerRole role);  // the YAML key, e.g. "own_indexed"
std::optional<LayerRole> parse_layer_role(std::string_view key);

}  // namespace v41sim
