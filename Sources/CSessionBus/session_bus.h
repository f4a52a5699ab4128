#ifndef SESAME_CSESSIONBUS_H
#define SESAME_CSESSIONBUS_H

/* sd-bus's types only, and no link: sesame-notify loads libsystemd with dlopen when it starts
   (SDBus.swift), so that the other programs sesamectl-commands is (every sesamectl command,
   the credential helpers) do not load libsystemd and its libraries at every start. */
#include <dlfcn.h>
#include <systemd/sd-bus.h>

#endif
