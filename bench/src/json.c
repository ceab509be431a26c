/* JSON writing: strings that are always valid JSON, numbers, the figures as printed. */
#include "bench.h"

#include <math.h>

/* length of the valid UTF-8 sequence at p (not overlong, no surrogate, <= U+10FFFF), 0 if none */
static int utf8_length(const unsigned char *p)
{
    unsigned char ch = p[0];
    int len = (ch & 0xe0) == 0xc0 ? 2 : (ch & 0xf0) == 0xe0 ? 3 : (ch & 0xf8) == 0xf0 ? 4 : 0;
    for (int i = 1; i < len; i++)
        if ((p[i] & 0xc0) != 0x80)
            return 0;
    if (len == 2 && ch < 0xc2)
        return 0;
    if (len == 3) {
        unsigned cp = ((ch & 0x0fu) << 12) | ((p[1] & 0x3fu) << 6) | (p[2] & 0x3fu);
        if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
    }
    if (len == 4) {
        unsigned cp = ((ch & 0x07u) << 18) | ((p[1] & 0x3fu) << 12) | ((p[2] & 0x3fu) << 6) |
                      (p[3] & 0x3fu);
        if (cp < 0x10000 || cp > 0x10ffff)
            return 0;
    }
    return len;
}

/* Valid UTF-8 sequences are copied; control characters, quotes and backslashes are escaped;
 * bytes that are not valid UTF-8 become \u00XX (their Latin-1 reading), so the document is
 * always valid JSON. */
void json_string(FILE *f, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    fputc('"', f);
    while (*p) {
        unsigned char ch = *p;
        int len = ch < 0x80 ? 1 : utf8_length(p);
        if (ch == '"' || ch == '\\') {
            fputc('\\', f);
            fputc(ch, f);
        } else if (ch == '\n') {
            fputs("\\n", f);
        } else if (ch == '\t') {
            fputs("\\t", f);
        } else if (ch == '\r') {
            fputs("\\r", f);
        } else if (ch < 0x20 || ch == 0x7f || len == 0) {
            fprintf(f, "\\u%04x", ch);
            len = 1;
        } else {
            fwrite(p, 1, (size_t)len, f);
        }
        p += len;
    }
    fputc('"', f);
}

void json_key(FILE *f, const char *k)
{
    json_string(f, k);
    fputc(':', f);
}

void json_number(FILE *f, double x, int digits)
{
    if (!isfinite(x))
        x = 0.0;
    fprintf(f, "%.*g", digits, x);
}

/* a figure exactly as the text prints it (two decimals) */
void json_figure(FILE *f, double x)
{
    if (!isfinite(x))
        x = 0.0;
    fprintf(f, "%.*f", FLOAT_PRECISION, x);
}

void json_bool(FILE *f, int b)
{
    fputs(b ? "true" : "false", f);
}
