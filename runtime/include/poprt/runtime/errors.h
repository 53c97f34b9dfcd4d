// The runtime's errors, in the three categories of Graphcore's Model Runtime:
//
// - ApplicationError: the caller's mistake (an unknown anchor name, a buffer of the wrong size, a
//   replica that does not exist, a file that is not a PopEF, request data a host op refuses).
//   The message says what and where. Nothing else is affected.
// - RecoverableRuntimeError: the request failed for a reason that is not its own, and the runtime
//   can go on; recoveryAction() says what happened and what to do (submit it again).
// - UnrecoverableRuntimeError: a replica broke (a simulated hardware fault or an internal error);
//   it is taken out of service and every request it holds fails. Other replicas go on serving.
//
// A runtime error fails the requests it touches and nothing else.
#pragma once

#include <stdexcept>
#include <string>

#include "export.h"

namespace poprt::runtime {

enum class ErrorCategory { Application, RecoverableRuntime, UnrecoverableRuntime };

enum class RecoveryAction {
  Retry,         // nothing is wrong with the device (a timeout): submit the request again
  ReplicaReset,  // the replica lost its memory; the runtime cleared it and reloaded the weights:
                 // submit the request again
};

class POPRT_RUNTIME_API Error : public std::runtime_error {
 public:
  Error(ErrorCategory category, const std::string& message);
  ~Error() override;
  ErrorCategory category() const { return category_; }

 private:
  ErrorCategory category_;
};

class POPRT_RUNTIME_API ApplicationError : public Error {
 public:
  explicit ApplicationError(const std::string& message);
  ~ApplicationError() override;
};

class POPRT_RUNTIME_API RecoverableRuntimeError : public Error {
 public:
  RecoverableRuntimeError(const std::string& message, RecoveryAction action);
  ~RecoverableRuntimeError() override;
  RecoveryAction recoveryAction() const { return action_; }

 private:
  RecoveryAction action_;
};

class POPRT_RUNTIME_API UnrecoverableRuntimeError : public Error {
 public:
  explicit UnrecoverableRuntimeError(const std::string& message);
  ~UnrecoverableRuntimeError() override;
};

}  // namespace poprt::runtime
