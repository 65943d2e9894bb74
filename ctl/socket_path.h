// Moved to common/socket_path.h (braked uses it too).
#pragma once
#include "common/socket_path.h"
