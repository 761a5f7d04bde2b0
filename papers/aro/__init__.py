"""ARO — *When and why vision-language models behave like bags-of-words* (Yuksekgonul et al., ICLR 2023). See README.md beside this file."""
