// toml++'s implementation, compiled into pkitconfig (toml++'s "compiled library" mode:
// TOML_HEADER_ONLY=0 for every file of pkitconfig, TOML_IMPLEMENTATION in this one),
// so that neither pkitd nor pkitctl loads libtomlplusplus.so (config/CMakeLists.txt).

#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
