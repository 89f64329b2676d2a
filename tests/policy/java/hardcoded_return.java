// expect: HardcodedOnly
public class SumCalculator {
    static int calculateSum() {
        return 5050;
    }

    public static void main(String[] args) {
        for (String a : args) {
            System.out.println(a);
        }
        System.out.println(calculateSum());
    }
}
