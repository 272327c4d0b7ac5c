#include "model/unicode_tables.h"

int ml_uni_class(uint32_t cp) {
    int lo = 0, hi = ml_uni_n_ranges - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (cp < ml_uni_ranges[mid].lo) hi = mid - 1;
        else if (cp > ml_uni_ranges[mid].hi) lo = mid + 1;
        else return (int)ml_uni_ranges[mid].cls;
    }
    return ML_UNI_OTHER;
}
