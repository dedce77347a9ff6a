#pragma once
// The upper module's header, which may include the lower one (fine).
#include "upskill/low/a.hpp"
