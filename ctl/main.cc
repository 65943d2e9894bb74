// brakectl: the operator CLI of braked. All of it lives in brake_ctl_lib.
#include <iostream>

#include "ctl/cli.h"

int main(int argc, char** argv) {
  return brake::ctl::Run(argc, argv, std::cin, std::cout, std::cerr,
                         brake::ctl::SystemEnv());
}
