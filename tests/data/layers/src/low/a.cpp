// A file of the lowest module that breaks the layering three ways (read by
// tests/support/check_layers_fixture.sh; never compiled).
#include "upskill/low/a.hpp"
#include "upskill/high/b.hpp"
#include "../high/c.hpp"
#include "upskill/nowhere/d.hpp"
#include <upskill/high/e.hpp>
