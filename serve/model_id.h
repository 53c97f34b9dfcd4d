// Which model and version a reply, metadata or statistics speak of.
#pragma once

#include <string>

namespace poprt::serve {

struct ModelId {
  std::string name;
  std::string version = "1";  // a --model file is version 1; a repository model its directory's number
};

}  // namespace poprt::serve
