#pragma once
// A local header of the module low.
