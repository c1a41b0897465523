from jaxlings.cli import main

main()
