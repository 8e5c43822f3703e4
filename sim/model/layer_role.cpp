#include "sim/model/layer_role.h"

namespace v41sim {

std::string_view role_key(LayerRole role) {
  switch (role) {
    case LayerRole::kWindowOnly:
      return "window_only";
    case LayerRole::kOwnIndexed:
      return "own_indexed";
    case LayerRole::kOwnDense:
      return "own_dense";
    case LayerRole::kReindex:
      return "reindex";
    case LayerRole::kReuse:
      return "reuse";
  }
  return "?";
}

std::optional<LayerRole> parse_layer_role(std::string_view key) {
  for (LayerRole role : kAllLayerRoles) {
    if (role_key(role) == key) return role;
  }
  return std::nullopt;
}

}  // namespace v41sim
