// Early-return helpers for absl::Status / absl::StatusOr, in the style of
// Arrow's RETURN_NOT_OK and ARROW_ASSIGN_OR_RAISE. __COUNTER__ keeps nested
// uses (a lambda inside a macro argument) from shadowing each other.
#ifndef BOLTPACK_COMMON_STATUS_MACROS_H_
#define BOLTPACK_COMMON_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define BP_CONCAT_INNER_(a, b) a##b
#define BP_CONCAT_(a, b) BP_CONCAT_INNER_(a, b)

#define BP_RETURN_IF_ERROR(expr) BP_RETURN_IF_ERROR_IMPL_(BP_CONCAT_(bp_status_, __COUNTER__), expr)
#define BP_RETURN_IF_ERROR_IMPL_(var, expr) \
  do {                                      \
    ::absl::Status var = (expr);            \
    if (!var.ok()) return var;              \
  } while (0)

#define BP_ASSIGN_OR_RETURN(lhs, expr) \
  BP_ASSIGN_OR_RETURN_IMPL_(BP_CONCAT_(bp_statusor_, __COUNTER__), lhs, expr)
#define BP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return std::move(tmp).status();  \
  lhs = std::move(tmp).value()

#endif  // BOLTPACK_COMMON_STATUS_MACROS_H_
