// Allowed: a subfolder of a module includes a header of its own module with ../.
#include "../a_local.hpp"
