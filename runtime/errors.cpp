#include "poprt/runtime/errors.h"

namespace poprt::runtime {

// Out-of-line destructors anchor each class's type information in the library, so a catch in a
// program linked against the shared library matches what the library throws.
Error::Error(ErrorCategory category, const std::string& message) : std::runtime_error(message), category_(category) {}
Error::~Error() = default;

ApplicationError::ApplicationError(const std::string& message) : Error(ErrorCategory::Application, message) {}
ApplicationError::~ApplicationError() = default;

RecoverableRuntimeError::RecoverableRuntimeError(const std::string& message, RecoveryAction action)
    : Error(ErrorCategory::RecoverableRuntime, message), action_(action) {}
RecoverableRuntimeError::~RecoverableRuntimeError() = default;

UnrecoverableRuntimeError::UnrecoverableRuntimeError(const std::string& message)
    : Error(ErrorCategory::UnrecoverableRuntime, message) {}
UnrecoverableRuntimeError::~UnrecoverableRuntimeError() = default;

}  // namespace poprt::runtime
