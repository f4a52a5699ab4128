#ifndef SESAME_CQRENCODE_SHIM_H
#define SESAME_CQRENCODE_SHIM_H

/* libqrencode (Debian: libqrencode-dev), for the QR code `sesamectl login` draws. */
#include <qrencode.h>

#endif
